import CareModel
public enum StorePlaceholder {}
