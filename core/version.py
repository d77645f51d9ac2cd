"""moot's version: here, below everything that reports it, so the engine never reaches up into `moot`."""

VERSION = "0.4.0"
