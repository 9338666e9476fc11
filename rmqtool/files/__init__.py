"""rmqtool/files"""
