"""Training of the shipped policies.  torch is imported only by runtime/train/ppo.py: the
environments are numpy + pybullet like the rest of runtime, so rollouts run the same numpy
inference the bake does."""
