"""The simulated Bitget exchange: market generator, frames, faults and the loopback server."""
