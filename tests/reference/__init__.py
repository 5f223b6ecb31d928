"""Other projects' implementations, copied so a test can compare ablate with them on the same tensors."""
