// The introspection data of /org/mpris/MediaPlayer2; the properties come from their tables
// (Properties.swift). The same text is kept as data in dbus/org.mpris.MediaPlayer2.groove.xml
// (installed); a unit test keeps the two identical.
public let mprisIntrospectionXML = #"""
<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<!-- The object /org/mpris/MediaPlayer2 that groove-bridge publishes (MPRIS 2.2). -->
<node>
  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
  </interface>
  <interface name="org.freedesktop.DBus.Peer">
    <method name="Ping"/>
    <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="out"/>
    </method>
    <method name="GetAll">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="properties" type="a{sv}" direction="out"/>
    </method>
    <method name="Set">
      <arg name="interface_name" type="s" direction="in"/>
      <arg name="property_name" type="s" direction="in"/>
      <arg name="value" type="v" direction="in"/>
    </method>
    <signal name="PropertiesChanged">
      <arg name="interface_name" type="s"/>
      <arg name="changed_properties" type="a{sv}"/>
      <arg name="invalidated_properties" type="as"/>
    </signal>
  </interface>
  <interface name="org.mpris.MediaPlayer2">
    <method name="Raise"/>
    <method name="Quit"/>
\#(MPRISProperty.introspection(MPRISProperty.root))
  </interface>
  <interface name="org.mpris.MediaPlayer2.Player">
    <method name="Next"/>
    <method name="Previous"/>
    <method name="Pause"/>
    <method name="PlayPause"/>
    <method name="Stop"/>
    <method name="Play"/>
    <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
    <method name="SetPosition">
      <arg name="TrackId" type="o" direction="in"/>
      <arg name="Position" type="x" direction="in"/>
    </method>
    <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
    <signal name="Seeked"><arg name="Position" type="x"/></signal>
\#(MPRISProperty.introspection(MPRISProperty.player))
  </interface>
  <interface name="org.mpris.MediaPlayer2.TrackList">
    <method name="GetTracksMetadata">
      <arg name="TrackIds" type="ao" direction="in"/>
      <arg name="Metadata" type="aa{sv}" direction="out"/>
    </method>
    <method name="AddTrack">
      <arg name="Uri" type="s" direction="in"/>
      <arg name="AfterTrack" type="o" direction="in"/>
      <arg name="SetAsCurrent" type="b" direction="in"/>
    </method>
    <method name="RemoveTrack"><arg name="TrackId" type="o" direction="in"/></method>
    <method name="GoTo"><arg name="TrackId" type="o" direction="in"/></method>
    <signal name="TrackListReplaced">
      <arg name="Tracks" type="ao"/>
      <arg name="CurrentTrack" type="o"/>
    </signal>
    <signal name="TrackAdded">
      <arg name="Metadata" type="a{sv}"/>
      <arg name="AfterTrack" type="o"/>
    </signal>
    <signal name="TrackRemoved"><arg name="TrackId" type="o"/></signal>
    <signal name="TrackMetadataChanged">
      <arg name="TrackId" type="o"/>
      <arg name="Metadata" type="a{sv}"/>
    </signal>
\#(MPRISProperty.introspection(MPRISProperty.trackList))
  </interface>
  <interface name="org.mpris.MediaPlayer2.Playlists">
    <method name="ActivatePlaylist"><arg name="PlaylistId" type="o" direction="in"/></method>
    <method name="GetPlaylists">
      <arg name="Index" type="u" direction="in"/>
      <arg name="MaxCount" type="u" direction="in"/>
      <arg name="Order" type="s" direction="in"/>
      <arg name="ReverseOrder" type="b" direction="in"/>
      <arg name="Playlists" type="a(oss)" direction="out"/>
    </method>
    <signal name="PlaylistChanged"><arg name="Playlist" type="(oss)"/></signal>
\#(MPRISProperty.introspection(MPRISProperty.playlists))
  </interface>
</node>
"""#
