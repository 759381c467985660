"""Figures: plotly figures of score tables and attention patterns, and their static PNGs."""
