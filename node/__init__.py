"""casstrace.node"""
