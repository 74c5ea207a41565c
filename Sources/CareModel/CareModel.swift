public enum CareModelPlaceholder {}
