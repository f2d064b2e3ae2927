"""The Textual terminal app: a thin App pushing one main screen (op tree, op detail, bisection panel),
modal screens in their own modules, workers for everything that reads tensors."""
