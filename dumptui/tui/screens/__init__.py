"""The main screen and the modal screens (help, save, export, open error), one module each."""
