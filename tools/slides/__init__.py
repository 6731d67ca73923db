"""The parts of `make slides` (tools/make_slides.py): a chapter read as lecture slides."""
