"""The worker: claims dirty windows under a lease and hands each to app.windows, which computes
and stores it (`calmon worker`, or a thread beside the API on SQLite).
"""
