"""The request path: a call's flow written once without I/O, its drivers, retry, time limits, client-side limits and the errors made of what arrived."""
