"""Agent Memory Lab: the shared package the lessons import."""
