"""What a dump is once indexed: Dump, Op and TensorRef (lazy, compact once frozen), slot maps, the graph model both graph parsers produce (ir), the dataflow as integer arrays (flowgraph)."""
