"""Geometry: data-movement ops become Regions over their inputs (MNN: source/geometry).

Functions are pure: descriptors (and constant values) in, regions out. `raster.py` is the numpy reference that
applies regions; `fuse.py` composes region chains so a tensor is read straight from its real source.
"""
