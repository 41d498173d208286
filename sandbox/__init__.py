"""casstrace.sandbox"""
