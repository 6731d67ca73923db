"""The parts of `make slides` (tools/slides/make_slides.py): a chapter read as lecture slides."""
