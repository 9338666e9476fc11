"""rmqtool/structures"""
