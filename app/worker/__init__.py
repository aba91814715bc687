"""The worker: claims dirty windows, reads their rows, computes and stores their metrics,
nowcasts and verdicts (`calmon worker`, or a thread beside the API on SQLite).
"""
