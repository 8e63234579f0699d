"""Measuring a request: tokens, anchors, calibration, the budget, UTF-16 units."""
