"""The persistent index cache in the user's cache folder (never a dump's) and the columns it stores an index as."""
