"""Import and export: published ClawGym task folders, Harbor task folders, trajectory datasets."""
