"""`harness site`: a static, relocatable website of every result found under some paths."""
