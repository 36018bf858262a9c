"""What a path the harness printed stands for, opened: for the CLI's readers and the site."""
