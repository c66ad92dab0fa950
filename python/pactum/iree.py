"""IREE bytecode modules (``.vmfb``) run by pactum."""
