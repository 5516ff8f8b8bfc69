"""The loop's components: features that plug into the loop's events (component.py)."""
