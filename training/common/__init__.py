"""What the recipes share: ending a command, report folders, pipeline variants, the selection splits."""
