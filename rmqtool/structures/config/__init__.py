"""rmqtool/structures/config"""
