"""A USDT-M perpetual market apart from any venue: instruments and the paper matching engine."""
