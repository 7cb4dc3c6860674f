// The plugins in this folder's subfolders are Python (detect/detect.py and its modules): SwiftPM
// makes a target only of a folder with a source file in it, and this file is that source. The
// target's resources, the plugins' folders, are copied as they are beside the cvhost executable,
// where cvhost looks them up by name (PluginLoader); scripts/install.sh puts them in
// lib/cvhost/plugins.
