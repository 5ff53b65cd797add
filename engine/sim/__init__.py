"""The simulated Bitget exchange: market generator, matching engine, loopback server."""
