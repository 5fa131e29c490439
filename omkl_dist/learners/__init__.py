"""Per-kernel online learners: each decides, per instance, the coefficient it adds for x_t."""
