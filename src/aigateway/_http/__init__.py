"""The HTTP stack: reading bodies in bounded pieces, the connections streams hold, event loops, and the connection pools the clients make."""
