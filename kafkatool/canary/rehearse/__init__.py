"""``kafkatool canary rehearse``: the canary loaded and served by a real, throwaway broker."""
