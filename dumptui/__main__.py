from dumptui.cli import command_line

command_line()
