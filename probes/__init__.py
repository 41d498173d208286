"""casstrace.probes"""
