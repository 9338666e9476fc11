"""rmqtool/structures/commitlog"""
