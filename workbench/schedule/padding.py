"""placeholder"""
class PaddingMethods:
    pass
