"""Category names for the ImageNet weights' ``meta["categories"]``.

NOTE: the 1,000 real ImageNet class names are not bundled (ember has no offline copy we
may ship); these are placeholders ``"class 0"`` ... ``"class 999"`` in the order of the
model's outputs, so ``categories[index]`` works and ``len(categories)`` sets the number
of classes.  Replace them with your own list of names if you need readable labels.
"""

IMAGENET_CATEGORIES = [f"class {i}" for i in range(1000)]
