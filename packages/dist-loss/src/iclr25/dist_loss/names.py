"""Method names of the Dist Loss experiments (arXiv 2411.15216, Sec. 4); import-light (no torch)."""

METHODS = ("l1", "mse", "focal_l1", "dist", "inverse", "dist_inverse", "sqinv_lds", "sqinv_lds_fds", "bmc")
HEAD_INITS = ("zero", "default", "official")  # RRT head initialisations, see `train.rrt`

# The precision of the Fabric that several processes train with: float32, the steps of one process (Fabric's own
# default would autocast the model's forward to bfloat16 on GPUs that support it).
FABRIC_PRECISION = "32-true"
