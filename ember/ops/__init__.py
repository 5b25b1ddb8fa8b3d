"""Op families.  Each file holds Function classes (forward and backward side by side),
then the public functions built on them."""
