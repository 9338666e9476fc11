"""rmqtool/engine"""
