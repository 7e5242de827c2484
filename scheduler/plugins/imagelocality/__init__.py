"""The ImageLocality Score plugin."""

from scheduler.plugins.imagelocality.image_locality import NAME, ImageLocality, calculate_priority, new

__all__ = ["NAME", "ImageLocality", "calculate_priority", "new"]
