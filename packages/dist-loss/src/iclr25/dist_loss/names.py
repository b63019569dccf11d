"""Method names of the Dist Loss experiments (arXiv 2411.15216, Sec. 4); import-light (no torch)."""

METHODS = ("l1", "mse", "focal_l1", "dist", "inverse", "dist_inverse", "sqinv_lds", "sqinv_lds_fds", "bmc")
HEAD_INITS = ("zero", "default", "official")  # RRT head initialisations, see `train.rrt`
