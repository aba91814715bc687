"""Prediction batches in: parsing, validation, window flooring and the batch service.

The write itself (COPY into predictions, the label updates) is SQL and lives in app.db.
"""
