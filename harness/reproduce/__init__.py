"""`harness reproduce`: run a recorded job again and judge whether its result holds."""
