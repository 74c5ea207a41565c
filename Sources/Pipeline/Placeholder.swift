// The import job lands here.
