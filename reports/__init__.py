"""casstrace.reports"""
