"""casstrace.analyses"""
