"""Widgets of the main screen: thin renderers of core objects that post messages."""
