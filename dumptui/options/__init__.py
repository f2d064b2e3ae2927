"""Which two dumps to compare and how: the pair options shared by the CLI and the app, the user's config file, --map files and msprobe layer mappings."""
