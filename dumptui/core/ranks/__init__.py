"""Several ranks and steps: the units of a dump, ranks merged into one graph, every unit bisected and ordered by the communication between ranks."""
