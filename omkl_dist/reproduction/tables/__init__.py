"""The papers' published numbers, transcribed (one module per paper), with our stand-in datasets."""
