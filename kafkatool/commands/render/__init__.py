"""Renderers the commands share: tables and text for a terminal (rich lives here and in commands/).
"""
