"""What a call is, below everything that performs it: the client's settings, a call's time limits, the I/O commands a flow yields, and the errors made of what arrived."""
