"""Snapshots: chunk splitting, the watermark-corrected chunk scan, and the hand-off to the log."""
